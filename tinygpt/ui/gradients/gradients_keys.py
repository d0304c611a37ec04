"""The Gradients page's session keys."""

from __future__ import annotations

W_GRAD_FIELD = "w_grad_field"
W_GRAD_VIEW = "w_grad_view"
