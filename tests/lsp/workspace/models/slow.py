"""An entrypoint that takes far longer than anyone waits: only cancellation ends it."""

import time


def build():
    time.sleep(600)
