"""The dashboard's JSON API, one module per resource; routes in `../urls.py`."""
