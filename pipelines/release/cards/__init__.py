"""A release's cards: DATACARD.md, the Hugging Face dataset card (README.md),
croissant.json, and the data card's figures."""
