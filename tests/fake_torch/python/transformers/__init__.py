"""A fake of the one part of Hugging Face transformers the category tests use: cache_utils.DynamicCache."""
from .cache_utils import DynamicCache  # noqa: F401
