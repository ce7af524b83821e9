"""Scripts for a machine with a real accelerator, run by hand (or by a session lent one): read-only."""
