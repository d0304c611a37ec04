"""What every page's screen shares, per browser session: help under the charts, a slow browser's backlog."""
