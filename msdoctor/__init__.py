"""msdoctor: environment doctor and preflight gate for MindSpore LLM pretraining."""

__version__ = "0.1.0"
