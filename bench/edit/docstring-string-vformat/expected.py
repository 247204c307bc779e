def _vformat(self, format_string, args, kwargs, used_args, recursion_depth,
             auto_arg_index=0):
    """Format ``format_string`` with ``args`` and ``kwargs``, the work behind ``vformat``.

    ``used_args`` is a set that collects the index or name of every argument a
    replacement field refers to. ``recursion_depth`` limits how deeply nested
    format specs (like ``{0:{1}}``) are expanded; ValueError is raised when it
    drops below zero. ``auto_arg_index`` is the next index for automatically
    numbered fields (``{}``), or False once a field was numbered by hand.

    Returns a tuple ``(formatted_string, auto_arg_index)`` so that nested calls
    can continue the automatic numbering.
    """
    if recursion_depth < 0:
        raise ValueError('Max string recursion exceeded')
    result = []
    for literal_text, field_name, format_spec, conversion in \
            self.parse(format_string):

        # output the literal text
        if literal_text:
            result.append(literal_text)

        # if there's a field, output it
        if field_name is not None:
            # this is some markup, find the object and do
            #  the formatting

            # handle arg indexing when empty field_names are given.
            if field_name == '':
                if auto_arg_index is False:
                    raise ValueError('cannot switch from manual field '
                                     'specification to automatic field '
                                     'numbering')
                field_name = str(auto_arg_index)
                auto_arg_index += 1
            elif field_name.isdigit():
                if auto_arg_index:
                    raise ValueError('cannot switch from manual field '
                                     'specification to automatic field '
                                     'numbering')
                # disable auto arg incrementing, if it gets
                # used later on, then an exception will be raised
                auto_arg_index = False

            # given the field_name, find the object it references
            #  and the argument it came from
            obj, arg_used = self.get_field(field_name, args, kwargs)
            used_args.add(arg_used)

            # do any conversion on the resulting object
            obj = self.convert_field(obj, conversion)

            # expand the format spec, if needed
            format_spec, auto_arg_index = self._vformat(
                format_spec, args, kwargs,
                used_args, recursion_depth-1,
                auto_arg_index=auto_arg_index)

            # format the object and append to the result
            result.append(self.format_field(obj, format_spec))

    return ''.join(result), auto_arg_index
