"""Pure renderers: domain objects to rows, shared by the CLI's tables and the TUI's views."""
