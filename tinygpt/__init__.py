"""tinygpt: a tiny character-level GPT you can watch learn.

The engine (this package) depends only on torch, numpy and safetensors; the Streamlit app lives in `app.py`,
`pages/` and `tinygpt/ui/`. Importing `tinygpt` is deliberately cheap: it imports no submodule, so
`import tinygpt` never pulls in torch. Import what you need, e.g. `from tinygpt.config import TransformerConfig`.
"""

__version__ = "0.1.0"
