// Suites that use the services also take their turn on the machine (MachineShare).
@_exported import TestSupport
