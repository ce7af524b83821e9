"""The console: a Textual app over `gpuadmin.service` (DESIGN §9). Imported only when the console starts."""
