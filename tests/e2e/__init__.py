"""End-to-end tests: a Jupyter kernel, nbclient or a browser (Chromium) drives xlanb."""
