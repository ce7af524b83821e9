"""The exit codes of DESIGN §8: a contract scripts rely on."""

OK = 0
REFUSED = 1  # the plan has violations
BAD_INPUT = 2  # bad input or usage (with file:line where there is a file)
CONFLICT = 3  # stale plan, lock held
NOT_PERMITTED = 4  # role
INTERRUPTED = 130
