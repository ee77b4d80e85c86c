"""When work comes due: recurrences (intervals, cron) and the timer queue."""
