"""One module per screen: the views, the describe and help pop-ups."""
