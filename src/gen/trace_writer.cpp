// placeholder, replaced by the gen implementation
