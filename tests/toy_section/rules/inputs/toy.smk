from isoflow.toy import ToyRun
from isoflow.toy.settings import ToySettings

TOY = config["toy"]
TOY_OPTIONS = command_line(ToySettings, TOY)


def runs_of_toy():
    return [f"{ToyRun(s).path(RESULTS)}.json" for s in TOY["seeds"]]


def toy_files():
    return reported([f"{section_dir('toy')}/tables/toy.csv", f"{section_dir('toy')}/figures/toy.png"], "toy")
