header
