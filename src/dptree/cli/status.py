"""The exit statuses of the ``dptree`` command: 0 done, 1 ``dptree budget --what-if``'s answer
that the release would not fit, 2 a usage or data error (one line on
stderr), 3 an internal error, 130 interrupted (128 + SIGINT), 141 when the reader of the output
went away (128 + SIGPIPE). A module of its own so that :func:`dptree.cli.main.main` has them
before anything else is loaded."""

EXIT_OK, EXIT_USER_ERROR, EXIT_INTERNAL_ERROR, EXIT_INTERRUPTED = 0, 2, 3, 130
#: the shell's status of a process ended by SIGPIPE (128 + 13): the reader of its output went away
EXIT_BROKEN_PIPE = 141
#: ``dptree budget LEDGER --what-if ...``: the release would be refused (not an error)
EXIT_WOULD_NOT_FIT = 1
