"""The Textual application. The only package that imports textual."""
