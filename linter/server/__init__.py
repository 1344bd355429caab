"""The language server (`sapo-lint server`): `app` speaks the protocol (pygls), `analysis` lints a document off the
event loop, `keys` and `text` answer completion and hover from the verl snapshot a document is checked against."""
