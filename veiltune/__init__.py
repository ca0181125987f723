"""veiltune's command line: one thin entry per DVC stage, plus detect/anonymize/flow/serve."""
