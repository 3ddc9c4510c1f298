#!/usr/bin/env python
"""The textbook peer's manage.py (bench/peer/README.md): run it from bench/peer."""

import os
import sys

if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "textbook.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)
