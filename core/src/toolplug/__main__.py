"""``python -m toolplug``: the command line."""

from toolplug.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
