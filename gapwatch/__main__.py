"""`python -m gapwatch` runs the command line, exactly like the `gapwatch` script."""

from gapwatch.cli import main

raise SystemExit(main())
