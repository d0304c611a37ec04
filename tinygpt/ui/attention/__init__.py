"""The Attention page: its keys, its figures and the step slider's playback."""
