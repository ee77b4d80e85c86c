"""The forecast's parts: ``plan``, ``simulation`` and ``report``; ``engine/forecast.py`` is
the public face."""
