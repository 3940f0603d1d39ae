"""The readings of a spec, one module each, in pipeline order.

spec (recording) -> rules (the one derivative rule per opcode) -> interpret (the oracle)
-> cotangent (engine backward) -> gradient (reverse mode as spec) -> plan -> emission;
describe prints networks and plans. Each reading is a pure function over IR values.
"""
