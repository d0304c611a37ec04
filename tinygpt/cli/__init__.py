"""The command line: `python -m tinygpt train|sample|runs` (`commands`), with flags built from the config's own
field table (`flags`). The same training loop as the app's workers, in the foreground."""
