"""The app record and its history, stored on the cluster exactly as kapp stores them."""
