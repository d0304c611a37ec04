"""The run in view: its id (mirrored in the URL), its shared reader, and the handle a page opens once a run."""
