"""The lesson and the classroom around it: steps, checks, the pane, predictions, the record, workshop links."""
