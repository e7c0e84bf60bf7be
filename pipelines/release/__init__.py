"""A release of any benchmark, by job: write/ (staging, tables, manifest, rename), cards/
(data card, Hugging Face card, Croissant, figures), check/ (verify, diff, digest),
explorer/ (the static pages to browse it)."""
