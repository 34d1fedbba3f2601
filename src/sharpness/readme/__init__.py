"""The README's and ``docs/``' generated parts: blocks written by code (:mod:`.blocks`,
:mod:`.sources`), the picture gallery (:mod:`.gallery`) and the numbers they show."""
