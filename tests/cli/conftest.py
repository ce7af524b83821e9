from tests.cli.clikit import state

__all__ = ["state"]
