"""Words and tables with no Streamlit and no files: what a run's records say, as text a page shows."""
