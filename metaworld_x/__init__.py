"""MetaWorld-X: a hierarchical humanoid loco-manipulation stack.

Importing this package is cheap on purpose: it pulls in neither torch,
transformers nor brax. Heavy modules are imported where they are used.
"""

__version__ = "0.1.0"
