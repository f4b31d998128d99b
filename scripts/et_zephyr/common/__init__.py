# SPDX-License-Identifier: Apache-2.0
"""Plain helpers every stage shares: tables, progress bars, quiet imports, step timing,
the ExecuTorch version check."""
