"""The data of topos: frozen, validated values and nothing that reads them.

Modules here import no reading (``topos.stages``) at import time; the door methods on
:class:`~topos.ir.network.Network` import their stage when called.
"""
