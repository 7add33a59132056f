// GDS: the installed library's version (an unknown-function error where it is not installed).
RETURN gds.version() AS version
