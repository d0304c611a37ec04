"""The Runs page: its keys and the run as one download."""
