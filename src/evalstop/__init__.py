"""evalstop: schedule RLHF fine-tuning jobs and stop the ones that are reward hacking."""
