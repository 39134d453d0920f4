"""Command-line tools that ship with godali (``python -m godali.tools.make_dataset``)."""
