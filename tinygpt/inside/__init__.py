"""Instruments that look inside a model on given text: attention maps (`maps`), the residual stream, head ablation
and the logit lens (`lens`), and what each head does (`heads`). The training loop captures with them and the lab
and the pages read them, so they sit below both."""
