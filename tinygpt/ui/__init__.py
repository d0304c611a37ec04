"""App-side helpers (state, charts, page support). They may import streamlit, plotly, altair and pandas;
`import tinygpt` never imports this package."""
