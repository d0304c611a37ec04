"""The run machinery: a config becomes a run folder (files, lock, status, writer, reader, retention), trained by one
loop (`loop`) in a worker process (`worker`), the CLI or torchrun (`distributed`), after a preflight."""
