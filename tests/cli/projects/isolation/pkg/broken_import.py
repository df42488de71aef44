import module_that_does_not_exist  # noqa: F401


def entry():
    return print, ()
