"""What every topic shares.

* ``explorer`` -- the :class:`Explorer` base of every widget (update in place, blitting, PNG);
* ``style`` -- the course's figure style and plot helpers (labelled colourbars, layer labels);
* ``stats`` -- the statistics core, re-exporting ``intervals``, ``bootstrap``, ``verdicts`` and ``ranking``;
* ``language`` -- does the tokenizer read the lesson's data language?
* ``progress`` -- progress bars that leave nothing behind in saved notebooks;
* ``data`` -- loaders of the data sets in ``data/``;
* ``checks`` -- argument checks shared by the by-hand rebuilds.
"""
