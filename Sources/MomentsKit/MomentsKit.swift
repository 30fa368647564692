@_exported import MomentsContract
