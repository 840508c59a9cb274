"""A Profile saved with :meth:`xlanb.Profile.save`, read by
:func:`xlanb.formats.profile_json.profile_from_json` (anything that is not a well-formed
``xlanb-profile`` document is a :class:`FormatError`, never another exception)."""

from __future__ import annotations

import os

from xlanb.core.profile import Profile
from xlanb.formats.profile_json import profile_from_json


def load_saved(text: str, path: str | os.PathLike) -> Profile:
    """The Profile of a saved-profile JSON document."""
    return profile_from_json(text, path)
