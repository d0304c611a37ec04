"""The Train page: its keys and its view together (the settings table, the form, live knobs, the live view)."""
