"""The dashboard's JSON API (spec §2), one module per resource; routes in `../urls.py`."""
