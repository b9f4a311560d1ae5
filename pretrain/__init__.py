"""Compact MLM trainer for XLM-R encoders. Not built yet: see the issues."""
