"""``python -m toolplug``: the command line."""

from toolplug.cli import console

if __name__ == "__main__":
    raise SystemExit(console())
