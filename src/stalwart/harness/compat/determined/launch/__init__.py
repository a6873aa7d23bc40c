"""determined.launch: launchers run as `python3 -m determined.launch.<name> ...`."""
