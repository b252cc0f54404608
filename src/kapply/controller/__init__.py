"""kapp-controller's App reconciler, written on kapply's public API.

It fetches, templates and deploys App resources on a period and on change,
with drift policies and ghost-diff explanations on top of kapp-controller.
"""
