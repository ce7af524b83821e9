"""The headless front end: every action as a command with JSON output and stable exit codes."""
