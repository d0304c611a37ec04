"""The Gradients page: its keys (the page itself draws from the run store and the charts)."""
